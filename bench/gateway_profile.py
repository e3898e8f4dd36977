#!/usr/bin/env python3
"""Split a profile of BenchmarkAPI_GatewayCall into who pays for a call.

Reads `go tool pprof -traces` output (CPU or alloc_space) on stdin and
prints, per call: the gateway, the upstream server (which that benchmark
runs in the same process), the GC's background workers and the bare
scheduler; then the gateway's share by component.

A sample with gcBgMarkWorker, bgsweep or bgscavenge on its stack is GC; one
with net/http.(*conn).serve is the upstream's server (the gateway's router
is driven directly by the benchmark, not through a net/http server); one
without a frame of any package below is scheduler/runtime. The rest is the
gateway's, assigned to the innermost frame of a package in COMPONENTS, in
that order; a sample whose leaf is a system call counts as socket syscalls.

Usage:
  go test -c -o api.test ./cmd/api
  ./api.test -test.run '^$' -test.bench 'BenchmarkAPI_GatewayCall$' \\
      -test.benchtime 10s -test.cpuprofile gw.cpu        # prints N calls
  go tool pprof -traces api.test gw.cpu | bench/gateway_profile.py N
  ./api.test ... -test.memprofile gw.mem -test.memprofilerate 512
  go tool pprof -sample_index=alloc_space -traces api.test gw.mem | bench/gateway_profile.py N
"""
import collections
import re
import sys

UNITS = {'ns': 1e-9, 'us': 1e-6, 'µs': 1e-6, 'ms': 1e-3, 's': 1,
         'B': 1, 'kB': 1024, 'KB': 1024, 'MB': 1024**2, 'GB': 1024**3}
VALUE = re.compile(r'\s*([\d.]+)(ns|us|µs|ms|s|B|kB|KB|MB|GB)\s+(.*)')

COMPONENTS = [(name, re.compile(rx)) for name, rx in [
    ('go-sdk client', r'github.com/modelcontextprotocol/go-sdk|github.com/segmentio'),
    ('internal/upstream', r'mcp-runtime/internal/upstream'),
    ('response.PassThrough', r'mcp-runtime/internal/runtime/response'),
    ('traces', r'mcp-runtime/internal/(traces|store)'),
    ('request log', r'mcp-runtime/internal/logging|rs/zerolog'),
    ('pipeline (guardrails)', r'mcp-runtime/internal/runtime/'),
    ('MCP server side', r'mcp-runtime/internal/(transport|protocol|handlers|auth|tenant|connlimit|ratelimit)'
                        r'|jsonschema/v6|mcp-runtime/cmd/api|go-chi'),
    ('metrics', r'prometheus'),
    ('net/http client', r'^net/http\.'),
]]


def parse(text):
    """Yields (value, frames leaf first) per sample."""
    for block in text.split('-----------+-------------------------------------------------------')[1:]:
        lines = [l for l in block.split('\n') if l.strip() and not l.strip().startswith('bytes:')]
        m = VALUE.match(lines[0]) if lines else None
        if m:
            yield float(m.group(1)) * UNITS[m.group(2)], [m.group(3).strip()] + [l.strip() for l in lines[1:]]


def side(frames):
    stack = ' '.join(frames)
    if re.search(r'runtime/pprof|testing\.\(\*M\)', stack) or (
            'BenchmarkAPI_GatewayCall' in stack and 'benchClient' not in stack):
        return 'benchmark set-up'
    if re.search(r'gcBgMarkWorker|runtime\.bgsweep|runtime\.bgscavenge', stack):
        return 'GC background workers'
    if 'net/http.(*conn).serve' in stack:
        return 'upstream server (in process)'
    if not any(rx.search(f) for f in frames for _, rx in COMPONENTS):
        return 'scheduler / runtime'
    return 'gateway'


def component(frames):
    if 'Syscall' in frames[0]:
        return 'socket syscalls'
    for f in frames:
        for name, rx in COMPONENTS:
            if rx.search(f):
                return name
    return 'other'


def main():
    calls = int(sys.argv[1])
    text = sys.stdin.read()
    samples = list(parse(text))
    cpu = re.search(r'^Type: cpu$', text, re.M) is not None
    per = (lambda v: f'{v / calls * 1e6:7.1f} µs') if cpu else (lambda v: f'{v / calls / 1024:7.1f} KiB')
    sides, comps = collections.Counter(), collections.Counter()
    for v, frames in samples:
        s = side(frames)
        sides[s] += v
        if s == 'gateway':
            comps[component(frames)] += v
    total = sum(sides.values())
    print(f'per call: {per(total).strip()}')
    for name, v in sides.most_common():
        print(f'  {name:32s} {per(v)}  {100 * v / total:5.1f} %')
    print('gateway by component:')
    for name, v in comps.most_common():
        print(f'  {name:32s} {per(v)}  {100 * v / total:5.1f} %')


if __name__ == '__main__':
    main()
