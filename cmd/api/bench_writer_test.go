package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestScaleOutWriter is the writing agent of TestScaleOut_Subscribers, run
// by it in a process of its own (MCP_SCALEOUT_WRITER is the server's URL):
// for every number read from standard input it makes that memory_store
// call and answers "call <n> <nanoseconds at the client> <durationMs>".
func TestScaleOutWriter(t *testing.T) {
	url := os.Getenv("MCP_SCALEOUT_WRITER")
	if url == "" {
		t.Skip("run by TestScaleOut_Subscribers")
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 30 * time.Second}
	w := subsWriter(t, client, url, os.Getenv("MCP_SCALEOUT_MODERN") == "1")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		i, err := strconv.Atoi(in.Text())
		if err != nil {
			t.Fatalf("writer input %q: %v", in.Text(), err)
		}
		d, ms := w(i)
		fmt.Printf("call %d %d %d\n", i, d.Nanoseconds(), ms)
	}
}

// startWriter starts TestScaleOutWriter against url and returns a function
// that has it make call i and returns the call's latency at that process
// and the envelope's durationMs.
func startWriter(t *testing.T, url string, modern bool) func(i int) (time.Duration, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestScaleOutWriter$")
	cmd.Env = append(os.Environ(), "MCP_SCALEOUT_WRITER="+url, "MCP_SCALEOUT_MODERN="+map[bool]string{false: "0", true: "1"}[modern])
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	out := bufio.NewScanner(stdout)
	return func(i int) (time.Duration, int) {
		if _, err := fmt.Fprintln(stdin, i); err != nil {
			t.Fatalf("writer: %v", err)
		}
		for out.Scan() {
			var n, ns, ms int
			if _, err := fmt.Sscanf(out.Text(), "call %d %d %d", &n, &ns, &ms); err == nil && n == i {
				return time.Duration(ns), ms
			}
		}
		t.Fatalf("writer ended before call %d: %v", i, out.Err())
		return 0, 0
	}
}

// callDurations reads the server's request log at path and returns the
// duration of every tools/call in it: the writer's memory_store calls
// (the log names the tool by its canonical name).
func callDurations(t *testing.T, path string) []time.Duration {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ds []time.Duration
	lines := bufio.NewScanner(f)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		var line struct {
			Method     string  `json:"method"`
			DurationMs float64 `json:"durationMs"`
		}
		if json.Unmarshal(lines.Bytes(), &line) == nil && line.Method == "tools/call" {
			ds = append(ds, time.Duration(line.DurationMs*float64(time.Millisecond)))
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return ds
}
