package report

import (
	"github.com/nel-eval/nel/runtime/metrics"
)

// HTMLWriter writes suite's HTML report into dir and returns its path
// (htmlreport.WriteFile). Package report cannot call it itself: htmlreport
// imports report.
type HTMLWriter func(dir string, suite []*metrics.Bundle, opts Options) (string, error)

// WriteRun writes the reports a finished run keeps beside its results
// (nel run, nel-run merge): RunFormats(reports) into dir, in that order,
// and returns the paths written. report.html is written by html; with a
// nil html it is left out and htmlSkipped says so, for nel-run, which
// cannot render HTML within its size budget and prints the command that
// does instead.
func WriteRun(dir string, suite []*metrics.Bundle, reports []string, opts Options, html HTMLWriter) (paths []string, htmlSkipped bool, err error) {
	formats, err := RunFormats(reports)
	if err != nil {
		return nil, false, err
	}
	for _, f := range formats {
		var written []string
		switch {
		case f == HTML && html == nil:
			htmlSkipped = true
			continue
		case f == HTML:
			var path string
			if path, err = html(dir, suite, opts); err == nil {
				written = []string{path}
			}
		default:
			written, err = WriteFiles(dir, suite, []Format{f}, opts)
		}
		paths = append(paths, written...)
		if err != nil {
			return paths, htmlSkipped, err
		}
	}
	return paths, htmlSkipped, nil
}
