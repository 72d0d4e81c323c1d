//go:build !linux

package inventory

// pipelineMin is fingerprint_linux.go's: the size from which a file is
// read by a second goroutine there. The tests use it for sizes.
const pipelineMin = 16 << 20
