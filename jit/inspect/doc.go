// Package inspect reads a store's entries and the driver's keys for
// people: the kind of each entry, the header variants of a build key's
// manifest, cache ls and cache show, the differences between two keys'
// inputs and headers (key diff), and why a request missed (key why and
// the changed line of a miss). The commands parse flags and call it.
package inspect
