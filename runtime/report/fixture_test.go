package report

import (
	"github.com/nel-eval/nel/runtime/metrics"
	"github.com/nel-eval/nel/runtime/report/internal/reporttest"
)

// The suite and its helpers live in internal/reporttest, shared with
// htmlreport's tests.

const hostileCategory = reporttest.HostileCategory

func testSuite() []*metrics.Bundle { return reporttest.Suite() }
