package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxFileBytes bounds the YAML file. A configuration file is a few KiB; the
// bound turns "-config /dev/zero" into an error instead of a hang.
const maxFileBytes = 1 << 20

// decodeFile decodes the YAML file at path over cfg. Keys absent from the
// file keep the values cfg already holds (the defaults).
func decodeFile(path string, cfg *Config) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read config %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return fmt.Errorf("read config %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return fmt.Errorf("read config %s: larger than %d bytes", path, maxFileBytes)
	}
	if err := decodeYAML(data, cfg); err != nil {
		return fmt.Errorf("parse config %s: %w", path, err)
	}
	return nil
}

// decodeYAML decodes data over cfg, rejecting unknown keys and more than one
// YAML document. A file that is empty or only comments leaves cfg as it is.
func decodeYAML(data []byte, cfg *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return withKeys(te, data)
		}
		return err
	}
	// Decode reads only the first document; a second one (two files
	// concatenated) would otherwise be ignored without a word.
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return err
	case !emptyDocument(&next):
		return fmt.Errorf("line %d: a second YAML document; the file must hold one", next.Line)
	}
	return nil
}

// emptyDocument reports whether n is a document holding only null, as after
// a trailing "---".
func emptyDocument(n *yaml.Node) bool {
	for _, c := range n.Content {
		if c.Kind != yaml.ScalarNode || c.Tag != "!!null" {
			return false
		}
	}
	return true
}

// withKeys rewrites the messages of te, which yaml.v3 locates only by line
// ("line 7: cannot unmarshal !!str `x` into int"), to also name the key as
// its dotted path ("line 7: transport.pageSize: cannot unmarshal ...").
// A line holding several keys (flow style) gets their common parent, or no
// key at all; the line number is kept either way.
func withKeys(te *yaml.TypeError, data []byte) error {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil {
		return te // cannot happen: the decoder parsed the same bytes
	}
	// A block mapping or sequence starts on the line of its first entry, so
	// each line may hold a container and a key. yaml.v3 reports a mapping or
	// sequence of the wrong type at the container, everything else (unknown
	// or duplicate keys, scalars of the wrong type) at the key or scalar.
	leaves := make(map[int][]string)
	containers := make(map[int][]string)
	recordKeys(&root, nil, leaves, containers)

	msgs := make([]string, len(te.Errors))
	for i, msg := range te.Errors {
		msgs[i] = msg
		// Every yaml.v3 TypeError message starts "line N: ".
		rest, ok := strings.CutPrefix(msg, "line ")
		if !ok {
			continue
		}
		num, rest, ok := strings.Cut(rest, ": ")
		if !ok {
			continue
		}
		line, err := strconv.Atoi(num)
		if err != nil {
			continue
		}
		first, second := leaves, containers
		if strings.HasPrefix(rest, "cannot unmarshal !!map") || strings.HasPrefix(rest, "cannot unmarshal !!seq") {
			first, second = containers, leaves
		}
		path, ok := first[line]
		if !ok {
			path = second[line]
		}
		if p := joinPath(path); p != "" {
			msgs[i] = "line " + num + ": " + p + ": " + rest
		}
	}
	return &yaml.TypeError{Errors: msgs}
}

// recordKeys records the path of every node under n by line: keys and
// scalars in leaves, mappings and sequences in containers. Where paths share
// a line, the line gets their common prefix.
func recordKeys(n *yaml.Node, path []string, leaves, containers map[int][]string) {
	if len(path) > 0 {
		switch n.Kind {
		case yaml.MappingNode, yaml.SequenceNode:
			record(containers, n.Line, path)
		default:
			record(leaves, n.Line, path)
		}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			recordKeys(c, path, leaves, containers)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			recordKeys(c, append(path[:len(path):len(path)], "["+strconv.Itoa(i)+"]"), leaves, containers)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := append(path[:len(path):len(path)], k.Value)
			record(leaves, k.Line, p)
			recordKeys(v, p, leaves, containers)
		}
	}
	// Aliases are not followed: their target is recorded where it is defined.
}

// record stores path for line, or the common prefix with what is there.
func record(lines map[int][]string, line int, path []string) {
	old, seen := lines[line]
	if !seen {
		lines[line] = path
		return
	}
	i := 0
	for i < len(old) && i < len(path) && old[i] == path[i] {
		i++
	}
	lines[line] = old[:i:i]
}

// joinPath joins path segments with ".", attaching list indexes directly:
// [allowedOrigins [2]] becomes "allowedOrigins[2]".
func joinPath(path []string) string {
	var b strings.Builder
	for i, seg := range path {
		if i > 0 && !strings.HasPrefix(seg, "[") {
			b.WriteByte('.')
		}
		b.WriteString(seg)
	}
	return b.String()
}
