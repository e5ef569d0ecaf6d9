package quorum

import (
	"bytes"
	"context"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// hclogWriter turns the lines hashicorp/raft writes through hclog (and the
// transport's and snapshot store's io.Writer logs) into slog records of
// the matching level. hclog is configured without timestamps, so a line
// reads "[LEVEL] name: message: key=value ...".
type hclogWriter struct {
	logger *slog.Logger
	// inProcess: the quorum is one in-process voter (Config.inProcess),
	// whose first election at every start is how it becomes leader, not a
	// lost leader worth a warning: raft's warning about it is logged at
	// debug level.
	inProcess bool
}

// electionStart is how raft's warning on starting an election begins.
const electionStart = "heartbeat timeout reached, starting election"

func (w *hclogWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		text := strings.TrimSpace(string(line))
		if text == "" {
			continue
		}
		level := slog.LevelInfo
		for prefix, l := range map[string]slog.Level{
			"[TRACE]": slog.LevelDebug - 4, "[DEBUG]": slog.LevelDebug, "[INFO]": slog.LevelInfo,
			"[WARN]": slog.LevelWarn, "[ERROR]": slog.LevelError, "[ERR]": slog.LevelError,
		} {
			if strings.HasPrefix(text, prefix) {
				level, text = l, strings.TrimSpace(strings.TrimPrefix(text, prefix))
				break
			}
		}
		if w.inProcess && level == slog.LevelWarn && strings.Contains(text, electionStart) {
			level = slog.LevelDebug
		}
		w.logger.Log(context.Background(), level, text)
	}
	return len(p), nil
}

// newHCLogger returns the hclog.Logger raft logs through, writing to w.
func newHCLogger(w *hclogWriter) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:        "raft",
		Level:       hclog.Info,
		Output:      w,
		DisableTime: true,
	})
}
