//go:build !linux

package main

import "errors"

func walkFloor([]string) { fatal(errors.New("floor walk: Linux only")) }
