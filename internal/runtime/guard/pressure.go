package guard

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Monitor samples the process's memory use against its memory limit
// (GOMEMLIMIT, which a Kubernetes deployment sets from the container's
// limit) in the background, so the gate reads one atomic per call.
// Without a limit the process has no ceiling to measure against and the
// level stays low. Thresholds: below 50 % low, below 75 % medium, below
// 90 % high, from 90 % critical (the PRD's highWaterMark default).
//
// Further sources — the in-process cache's own pressureLevel, which the
// PRD's memory-pressure gate reads — are sampled with it, and the level is
// the highest of all.
type Monitor struct {
	level   atomic.Value // Pressure
	sources []func() Pressure
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

// NewMonitor starts sampling every interval; Close stops it.
func NewMonitor(interval time.Duration, sources ...func() Pressure) *Monitor {
	m := &Monitor{sources: sources, stop: make(chan struct{}), done: make(chan struct{})}
	m.level.Store(m.sample())
	go m.loop(interval)
	return m
}

// Level is the last sampled pressure.
func (m *Monitor) Level() Pressure { return m.level.Load().(Pressure) }

// Close stops the sampler and waits for it (INV-MCP-XC-003).
func (m *Monitor) Close() {
	m.once.Do(func() { close(m.stop) })
	<-m.done
}

func (m *Monitor) loop(interval time.Duration) {
	defer close(m.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.level.Store(m.sample())
		}
	}
}

func (m *Monitor) sample() Pressure {
	level := processPressure()
	for _, src := range m.sources {
		if p := src(); rank(p) > rank(level) {
			level = p
		}
	}
	return level
}

// rank orders the levels; an unknown value ranks lowest.
func rank(p Pressure) int {
	switch p {
	case PressureMedium:
		return 1
	case PressureHigh:
		return 2
	case PressureCritical:
		return 3
	}
	return 0
}

// processPressure is the heap in use against GOMEMLIMIT.
func processPressure() Pressure {
	limit := debug.SetMemoryLimit(-1) // reads the limit without changing it
	if limit <= 0 || limit == math.MaxInt64 {
		return PressureLow
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	used := s[0].Value.Uint64() - s[1].Value.Uint64()
	return LevelFor(float64(used) / float64(limit))
}

// LevelFor maps a used/limit ratio to a pressure level.
func LevelFor(ratio float64) Pressure {
	switch {
	case ratio >= 0.9:
		return PressureCritical
	case ratio >= 0.75:
		return PressureHigh
	case ratio >= 0.5:
		return PressureMedium
	}
	return PressureLow
}
