package main

import "github.com/nel-eval/nel/internal/cli"

// profiled runs a command's work under the profiles its flags asked for;
// a profile that cannot be started or written fails the command, as a
// silently missing profile would mislead whoever asked for it.
func profiled(e *env, p *cli.Profiles, work func() int) int {
	stop, err := p.Start()
	if err != nil {
		e.errorf("%v", err)
		return exitFailure
	}
	code := work()
	if err := stop(); err != nil {
		e.errorf("%v", err)
		if code == exitOK {
			code = exitFailure
		}
	}
	return code
}
