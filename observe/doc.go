// Package observe is what the engine tells of itself: the request log (one
// record per build, rotated), its totals over a period and their plot,
// the build-duration histogram, the store's counters as Prometheus
// metrics (printed, served on a loopback address, written to a textfile),
// the leveled daemon log and the checks of the settings that configure
// them. The commands that print these parse flags and call it.
package observe
