package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The abuse tests (abuse_*_test.go) send hostile or careless traffic through
// the real HTTP server and prove two things besides the attack's own
// outcome: a well-behaved client on the same server keeps getting answers
// while it happens, and the process's memory returns to within
// rssTolerance of where it was before. underAttack wraps both.

// rssTolerance is how far the resident set may stay above its level
// before the attack once the attack is over (README, "Limits").
const rssTolerance = 50 << 20

// underAttack runs attack against the server at url while a bystander
// (a separate client session, authenticated with token when it is not
// empty) keeps calling runtime_echo. It fails the test if any of the
// bystander's calls fails, if the bystander is not answered after the
// attack, or if the resident set does not come back within rssTolerance.
func underAttack(t *testing.T, url, token string, attack func()) {
	t.Helper()
	b := startBystander(t, url, token)
	before := settledRSS()
	start := b.done.Load()
	attack()
	// The server must still answer the bystander after the attack, not
	// only before it: wait for two more calls than it had made.
	b.await(t, start+2)
	b.stop(t)
	// Memory the attack made the server hold is released when the
	// attacking connections and sessions go; give the server the moment
	// that takes, then compare.
	var after uint64
	deadline := time.Now().Add(10 * time.Second)
	for {
		after = settledRSS()
		if after <= before+rssTolerance || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("resident set: %d MiB before, %d MiB after; bystander: %d calls answered", before>>20, after>>20, b.done.Load())
	if after > before+rssTolerance {
		t.Errorf("resident set grew from %d MiB to %d MiB during the attack and stayed there (tolerance %d MiB)",
			before>>20, after>>20, rssTolerance>>20)
	}
}

// bystander is a well-behaved client calling runtime_echo in a loop.
type bystander struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   atomic.Int64 // calls answered successfully
	mu     sync.Mutex
	errs   []string
	called chan struct{} // receives (without blocking) after each answered call
}

func startBystander(t *testing.T, url, token string) *bystander {
	t.Helper()
	cs := connectAs(t, url, token, nil)
	ctx, cancel := context.WithCancel(context.Background())
	b := &bystander{cancel: cancel, called: make(chan struct{}, 1)}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
			res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "runtime_echo", Arguments: map[string]any{"text": "bystander " + strconv.Itoa(i)}})
			ccancel()
			switch {
			case ctx.Err() != nil:
				return
			case err != nil:
				b.fail(fmt.Sprintf("call %d: %v", i, err))
			case res.IsError:
				b.fail(fmt.Sprintf("call %d: isError result", i))
			default:
				b.done.Add(1)
				select {
				case b.called <- struct{}{}:
				default:
				}
			}
			// A bystander is an agent at work, not a load generator.
			time.Sleep(5 * time.Millisecond)
		}
	}()
	b.await(t, 1)
	return b
}

func (b *bystander) fail(msg string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.errs) < 10 {
		b.errs = append(b.errs, msg)
	}
}

// await waits until the bystander has made n successful calls.
func (b *bystander) await(t *testing.T, n int64) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for b.done.Load() < n {
		select {
		case <-b.called:
		case <-timeout:
			b.mu.Lock()
			defer b.mu.Unlock()
			t.Fatalf("the bystander made %d successful calls, want %d; its failures: %v", b.done.Load(), n, b.errs)
		}
	}
}

// stop ends the bystander's loop and reports its failures.
func (b *bystander) stop(t *testing.T) {
	t.Helper()
	b.cancel()
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.errs) > 0 {
		t.Errorf("a well-behaved client was refused during the attack: %s", strings.Join(b.errs, "; "))
	}
}

// settledRSS collects garbage, returns freed memory to the OS and reads the
// process's resident set from /proc/self/status. Under the race detector
// it reads the memory the Go runtime holds from the OS instead: the
// detector's shadow of every heap address ever used is never given back,
// so a race build's resident set keeps what an attack's garbage touched
// although the heap is back where it was.
func settledRSS() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	if raceDetector {
		m := []rtmetrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
		rtmetrics.Read(m)
		return m[0].Value.Uint64() - m[1].Value.Uint64()
	}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// rawPost sends body to url as one MCP POST with the given extra headers
// and returns the response (its body not read).
func rawPost(t *testing.T, url, body string, headers map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	return resp
}

// scrape reads unlabelled samples from one scrape of the server's
// /metrics, so that figures compared with each other are of one moment.
func scrape(t *testing.T, url string, names ...string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]float64, len(names))
	for _, name := range names {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(body)
		if m == nil {
			t.Fatalf("/metrics has no %s", name)
		}
		if out[name], err = strconv.ParseFloat(string(m[1]), 64); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return out
}

// metric reads one unlabelled sample from the server's /metrics.
func metric(t *testing.T, url, name string) float64 {
	t.Helper()
	return scrape(t, url, name)[name]
}
