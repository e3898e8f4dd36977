package protocol

// LoggingLevel is a syslog severity (RFC 5424) as MCP names it.
type LoggingLevel string

const (
	LevelDebug     LoggingLevel = "debug"
	LevelInfo      LoggingLevel = "info"
	LevelNotice    LoggingLevel = "notice"
	LevelWarning   LoggingLevel = "warning"
	LevelError     LoggingLevel = "error"
	LevelCritical  LoggingLevel = "critical"
	LevelAlert     LoggingLevel = "alert"
	LevelEmergency LoggingLevel = "emergency"
)

// Severity orders levels, debug lowest; 0 means not a level.
func (l LoggingLevel) Severity() int {
	switch l {
	case LevelDebug:
		return 1
	case LevelInfo:
		return 2
	case LevelNotice:
		return 3
	case LevelWarning:
		return 4
	case LevelError:
		return 5
	case LevelCritical:
		return 6
	case LevelAlert:
		return 7
	case LevelEmergency:
		return 8
	}
	return 0
}

// Valid reports whether l is one of the eight levels.
func (l LoggingLevel) Valid() bool { return l.Severity() > 0 }

// SetLevelParams are the params of logging/setLevel.
type SetLevelParams struct {
	Level LoggingLevel `json:"level"`
}

// LoggingMessageParams are the params of notifications/message.
type LoggingMessageParams struct {
	Level  LoggingLevel `json:"level"`
	Logger string       `json:"logger,omitempty"`
	Data   any          `json:"data"`
}
