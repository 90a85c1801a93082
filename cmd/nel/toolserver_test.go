package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// cmdServeTools: serve-tools ADDR LOG serves a NeMo Gym resource server on
// ADDR for the rest of the script, as the tool_calling solver's
// resource_service reads one: /health, /openapi.json listing one tool,
// add ({a, b} numbers), and POST /add answering {"sum": a+b}. Each call's
// body is appended to LOG, one JSON line, so that a script can see which
// sample (session_id) called with what.
func cmdServeTools(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: serve-tools ADDR LOG")
	}
	logPath := ts.MkAbs(args[1])
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"status": "ok"}`) })
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"openapi": "3.1.0", "paths": {"/add": {"post": {"summary": "Add two numbers",
			"requestBody": {"content": {"application/json": {"schema": {"type": "object",
				"properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}}}}}}}`)
	})
	mux.HandleFunc("POST /add", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			A, B      *float64
			SessionID string `json:"session_id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.A == nil || body.B == nil {
			http.Error(w, `{"error": "want {\"a\": number, \"b\": number}"}`, http.StatusUnprocessableEntity)
			return
		}
		line, _ := json.Marshal(map[string]any{"session_id": body.SessionID, "a": *body.A, "b": *body.B})
		if f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.Write(append(line, '\n'))
			f.Close()
		}
		fmt.Fprintf(w, `{"sum": %g}`, *body.A+*body.B)
	})
	ln, err := net.Listen("tcp", strings.TrimPrefix(args[0], "http://"))
	ts.Check(err)
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	ts.Defer(func() { srv.Close() })
}
