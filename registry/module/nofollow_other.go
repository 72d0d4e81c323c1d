//go:build !unix

package module

const syscallNoFollow = 0
