// Package inventory defines ptojit's typed identity records and the content
// fingerprints built from them. It uses the standard library only.
//
// # Identity records (schema 1)
//
// A record is a Value: None, Bool, Int (any size), Float (the IEEE-754 bits
// of a float64), Str (a sequence of code points, lone surrogates included),
// Bytes, List, Tuple or Dict (string keys). Encode writes it as compact ASCII
// JSON:
//
//	encode(v) = ["pypto.identity",1,T(v)]
//
//	T(None)    = ["none"]
//	T(b)       = ["bool",true] | ["bool",false]
//	T(i)       = ["int","<decimal>"]           minus sign, no leading zeros, "0"
//	T(f)       = ["float64","<16 lowercase hex digits of the big-endian bits>"]
//	T(s)       = ["str","<lowercase hex of the code points' UTF-8 form>"]
//	T(b)       = ["bytes","<lowercase hex>"]
//	T(list)    = ["list",[T(x),...]]
//	T(tuple)   = ["tuple",[T(x),...]]
//	T(dict)    = ["dict",[[T(k),T(v)],...]]    pairs sorted by key code points
//
// and Digest is the SHA-256 of that encoding. The bytes equal those of the
// public pypto._identity module, so Python frontends and ptojit agree on every
// digest. A surrogate code point U+D800..U+DFFF inside a Str is written as its
// 3-byte form (ED A0 80 for U+D800), as Python's "surrogatepass" does; in
// that form byte order equals code-point order, so dict keys sort bytewise.
//
// There is no fallback: a nil Value, a cycle, a non-string dict key (in
// FromGo) or an unsupported Go type is an error.
//
// # Concurrency of the walk
//
// Fingerprint lists directories and reads files on a stack of tasks run by
// at most FingerprintOptions.Workers goroutines (taskQueue), not on an
// errgroup with SetLimit: BenchmarkWalkScheduler measured the two side by
// side, equal within noise on a 6,500-file tree, but over 100,000 small
// files the errgroup, starting a goroutine per directory, took 1.08x the
// queue's time (see taskQueue).
package inventory
