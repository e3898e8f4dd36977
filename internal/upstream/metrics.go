package upstream

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

var allStates = []State{StateConnecting, StateConnected, StateError, StateDisabled}

// metrics exports each server's state (INV-MCP-ECO-200): a gauge that is 1
// for the current state and 0 for the others, and a counter of entries
// into each state. A nil *metrics records nothing.
type metrics struct {
	state   *prometheus.GaugeVec
	changes *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mcp_upstream_state",
			Help: "1 for the upstream server's current state, 0 for the others.",
		}, []string{"server", "state"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcp_upstream_state_changes_total",
			Help: "Transitions of an upstream server into a state.",
		}, []string{"server", "state"}),
	}
	var err error
	if m.state, err = register(reg, m.state); err != nil {
		return nil, err
	}
	if m.changes, err = register(reg, m.changes); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or reuses the identical collector already
// registered (a second Manager on the same registry, in tests say).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

func (m *metrics) setState(server string, to State, changed bool) {
	if m == nil {
		return
	}
	for _, s := range allStates {
		v := 0.0
		if s == to {
			v = 1
		}
		m.state.WithLabelValues(server, string(s)).Set(v)
	}
	if changed {
		m.changes.WithLabelValues(server, string(to)).Inc()
	}
}

// forget drops a removed server's series.
func (m *metrics) forget(server string) {
	if m == nil {
		return
	}
	m.state.DeletePartialMatch(prometheus.Labels{"server": server})
	m.changes.DeletePartialMatch(prometheus.Labels{"server": server})
}
