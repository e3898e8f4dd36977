// Package layers holds no code: its test checks that every import in the
// module runs down the table of docs/architecture-layers.md.
package layers
