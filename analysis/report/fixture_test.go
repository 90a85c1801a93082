package report

import (
	"github.com/nel-eval/nel/analysis/report/internal/reporttest"
	"github.com/nel-eval/nel/runtime/metrics"
)

// The suite and its helpers live in internal/reporttest, shared with
// htmlreport's tests.

const hostileCategory = reporttest.HostileCategory

func testSuite() []*metrics.Bundle { return reporttest.Suite() }
