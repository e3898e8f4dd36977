package traces

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		key  string // "" when valid
	}{
		{"zero means defaults", Options{}, ""},
		{"explicit values", Options{QueueSize: 100, BatchSize: 100, FlushInterval: time.Second,
			WriteTimeout: time.Second, Retention: 30 * 24 * time.Hour, PurgeInterval: time.Minute}, ""},
		{"small queue shrinks the default batch", Options{QueueSize: 10}, ""},

		{"negative queue", Options{QueueSize: -1}, "traces.queueSize"},
		{"huge queue", Options{QueueSize: maxQueueSize + 1}, "traces.queueSize"},
		{"negative batch", Options{BatchSize: -5}, "traces.batchSize"},
		{"huge batch", Options{BatchSize: maxBatchSize + 1}, "traces.batchSize"},
		{"batch above queue", Options{QueueSize: 100, BatchSize: 101}, "traces.batchSize"},
		{"negative flush", Options{FlushInterval: -time.Millisecond}, "traces.flushIntervalMs"},
		{"sub-millisecond flush", Options{FlushInterval: time.Microsecond}, "traces.flushIntervalMs"},
		{"hour-long flush", Options{FlushInterval: time.Hour}, "traces.flushIntervalMs"},
		{"negative write timeout", Options{WriteTimeout: -1}, "traces.writeTimeoutMs"},
		{"hour-long write timeout", Options{WriteTimeout: time.Hour}, "traces.writeTimeoutMs"},
		{"negative retention", Options{Retention: -24 * time.Hour}, "traces.retentionDays"},
		{"one-second retention", Options{Retention: time.Second}, "traces.retentionDays"},
		{"sub-day retention", Options{Retention: 23 * time.Hour}, "traces.retentionDays"},
		{"century retention", Options{Retention: 36500 * 24 * time.Hour}, "traces.retentionDays"},
		{"negative purge interval", Options{PurgeInterval: -time.Second}, "traces.purgeIntervalMs"},
		{"millisecond purge interval", Options{PurgeInterval: time.Millisecond}, "traces.purgeIntervalMs"},
		{"monthly purge", Options{PurgeInterval: 30 * 24 * time.Hour}, "traces.purgeIntervalMs"},
		{"failed calls only", Options{SampleRate: ptr(0.0)}, ""},
		{"every call", Options{SampleRate: ptr(1.0)}, ""},
		{"negative sample rate", Options{SampleRate: ptr(-0.1)}, "traces.sampleRate"},
		{"sample rate above 1", Options{SampleRate: ptr(1.5)}, "traces.sampleRate"},
		{"NaN sample rate", Options{SampleRate: ptr(math.NaN())}, "traces.sampleRate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if tt.key == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error naming %s", tt.key)
			}
			if !strings.HasPrefix(err.Error(), tt.key+": ") {
				t.Errorf("Validate() = %q, want it to name %s first", err, tt.key)
			}
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Key != tt.key {
				t.Errorf("Validate() = %#v, want an *OptionError for %s", err, tt.key)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	err := Options{QueueSize: -1, BatchSize: -1, FlushInterval: -1, Retention: -1, PurgeInterval: -1}.Validate()
	for _, key := range []string{"traces.queueSize", "traces.batchSize", "traces.flushIntervalMs", "traces.retentionDays", "traces.purgeIntervalMs"} {
		if !strings.Contains(err.Error(), key+": ") {
			t.Errorf("error %q does not name %s", err, key)
		}
	}
}

func TestValidateMessage(t *testing.T) {
	err := Options{Retention: -48 * time.Hour}.Validate()
	want := "traces.retentionDays: invalid value -2: want 0 (default 7) or 1 to 3650 days"
	if err == nil || err.Error() != want {
		t.Errorf("Validate() = %v, want %q", err, want)
	}
}

func TestDefaults(t *testing.T) {
	d := Options{}.withDefaults()
	if d.QueueSize != 10_000 || d.BatchSize != 500 || d.FlushInterval != 200*time.Millisecond ||
		d.WriteTimeout != 5*time.Second || d.Retention != 7*24*time.Hour || d.PurgeInterval != time.Hour || d.Now == nil {
		t.Errorf("defaults = %+v", d)
	}
	if b := (Options{QueueSize: 10}).withDefaults().BatchSize; b != 10 {
		t.Errorf("default batch with a queue of 10 = %d, want 10", b)
	}
}

func ptr[T any](v T) *T { return &v }
