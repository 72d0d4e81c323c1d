// Package envaudit checks that every environment variable a code base reads
// is classified in its environment registry, the _environment.json file of
// docs/design.md "Environment registry". It is the static lint behind
// `ptojit envaudit`: it parses sources without importing or running them.
//
// # Registry
//
// The registry's format, its parser and its categories are in package
// envaudit/envreg, which uses no cgo, so the build driver reads the same file
// without linking the lint.
//
// # Layouts
//
// Config.Scans chooses the files: scan roots, each with its suffixes. Left
// empty, it follows the root's layout (Defaults): PyPTO's, a directory
// python/pypto, gets DefaultScans and DefaultRegistry, the roots PyPTO's
// lint scans, so that a parity run is exact; any other gets PlainScans
// (every Python, C/C++ and Go file under the root) and PlainRegistry, so
// that the files a pre-commit hook names are audited by their suffix in
// any repository.
//
// # Reads
//
// A read is either a literal variable name, or a dynamic read: a name the
// scanner cannot resolve statically, or a bulk read of the whole environment.
// Each read carries the function holding it, which is what an exception
// names.
//
// Python (parsed with tree-sitter): os.getenv and os.getenvb; .get, .pop and
// .setdefault of os.environ and os.environb (first argument or key=);
// loads of os.environ[...] and os.environb[...]; any other os.environ.<method>
// call (a dynamic read); an augmented assignment to os.environ
// (`os.environ |= {...}`, a dynamic read) or to os.environ[K] (a read of K),
// which loads before it stores. Names may be reached through `import os as o`,
// `from os import environ as E, getenv` and assignments from os.* names
// (`read = os.environ.get`); `from os import *` binds getenv, getenvb,
// environ and environb. Aliases are lexically scoped: a name bound in a
// scope (assignment, parameter, import, for target, with/except alias, def,
// class, del) does not inherit the enclosing alias there, and methods see the
// module's bindings, not the class's. An argument resolves when it is a string
// literal (implicit concatenation included; an f-string without a
// placeholder is one), a bytes literal that decodes as ASCII, or a module- or
// class-level constant: a name assigned exactly once
// in that scope, at the top level of its body, from a literal or an earlier
// constant, and declared `global` nowhere. A function that binds the name
// anywhere (including a parameter) shadows the constant. Passing, iterating,
// copying or otherwise using os.environ as a value is a bulk read, and so is
// passing a reading function (os.getenv, os.environ.get, ...) as a value;
// storing either in a name makes an alias, storing it anywhere else (an
// attribute, an item, an unpacking) is a bulk read. Reflective access (getattr, __import__,
// importlib) is not recognised. The function of a read is the innermost
// enclosing def, or "<module>".
//
// Python sources are read as Python 3.10 reads them (Config.Python, the
// --python flag, accepts the syntax of 3.11 or 3.12): a UTF-8 BOM is dropped,
// a PEP 263 coding cookie selects the encoding (UTF-8, Latin-1 and ASCII are
// decoded; any other is a finding), and literals decode exactly as Python
// decodes them (octal, \x, \u, \U, \N{name} with the names of
// golang.org/x/text/unicode/runenames plus the name aliases, raw and bytes
// literals, doubled braces of f-strings, universal newlines). Every file is
// parsed, and one Python would not compile is a "syntax" finding with line
// and column (PyPTO's lint fails on it): a tree-sitter error, a construct
// tree-sitter accepts and Python 3.10 rejects (Python 2 print and exec
// statements, <>, backticks, 10L, 0777, the ur prefix; and the version
// table: except* until 3.11, type statements and the type parameters of a
// def or class header until 3.12, where a subscripted annotation such as
// `x: list[int]`, which tree-sitter also builds a type_parameter node for,
// is no such parameter), undecodable bytes, a bad escape or an unknown
// character name, bytes mixed with str, a NUL byte. Output never carries raw
// source bytes: names and messages are escaped where they hold anything but
// printable characters.
//
// C++ (a lexer of its own that skips comments, string and character
// literals, raw strings R"d(...)d" and digit separators, and splices line
// continuations): every getenv( and secure_getenv( call. Adjacent string
// literals are joined into one name; any other argument is a dynamic read.
// The line is that of the call; the function is "<cpp>".
//
// Go (go/parser): os.Getenv, os.LookupEnv, syscall.Getenv, and calls
// through any function value or method named Getenv, getenv, LookupEnv or
// lookupEnv (ptojit passes os.Getenv around as cli.Env.Getenv); os.Environ,
// syscall.Environ, os.ExpandEnv and os.Expand are bulk reads. Arguments
// resolve when they are string literals or constant expressions of them,
// including package-level constants declared in other files of the package
// and, in a whole-module audit (a go.mod at the root), exported constants of
// the module's other packages (pkg.Name).
// The function is "Name", "Type.Method", or "<package>" for package-level
// initializers; a function literal counts as its enclosing function.
// Implicit inheritance of the environment by child processes is not a read
// and is not reported.
//
// # Differences from PyPTO's lint
//
// ptojit envaudit is the lint of PyPTO's tests/lint/check_environment_inputs.py
// (with its _cpp_text.py), and on PyPTO's own tree it prints the same lines
// (bench/envaudit-differential.sh compares the two on any checkout). Where
// the two differ it is a decision, each row pinned by a fixture
// (testdata/audit/differences.txtar unless another is named):
//
//	construct                        ptojit                         the lint; why ptojit differs
//	order of the findings            by path and line; --order      scan roots in order, files by path, a
//	                                 upstream gives the lint's      file's reads in ast.walk's breadth-first
//	                                 (parity.txtar, parity_path)    order; sorted is stable for pre-commit
//	a syntax error, Python 2         a "cannot parse" finding       crashes with a traceback; a lint must
//	print, a type statement                                         not crash, and the reads are unknown
//	a UTF-8 BOM                      dropped, as Python drops it    read_text keeps U+FEFF: ast.parse fails
//	except*                          a finding under 3.10, the      parsed by the Python running it (3.11
//	                                 default; --python 3.11         takes it); the lint targets 3.10
//	                                 accepts it (versions31x)
//	os.environ["A"] += "x"           a read of A                    nothing (the Subscript is a Store), but
//	                                                                an augmented assignment loads first
//	self.env = os.environ            a dynamic read                 nothing (the parent is an Assign); the
//	                                                                mapping escapes where no scan follows
//	map(os.getenv, names)            a dynamic read                 nothing; a reader passed as a value reads
//	from os import *; getenv("A")    a read of A                    nothing; * binds getenv and environ
//	os.getenv(f"A")                  a read of A                    a dynamic read; an f-string without a
//	                                                                placeholder is the constant "A"
//	"A" in os.environ,               a read of A                    a dynamic read; the membership test
//	os.environ.__contains__("A")                                    reads exactly A (dynamic.py)
//	a name that is not a plain       quoted and escaped: "A-B",     raw: A-B, A\38, a raw control byte; a
//	identifier                       "A\\38", "A\x01"               quoted name cannot pass for another
//	C++ '"', R"xy(...)xy", a         read as C++ reads them         its regex takes '"' and raw strings for
//	continued line, u8"A", L"...",   (also testdata/cpp)            strings, misses spliced calls, gives
//	an unterminated string                                          u8"A" no name
//	C++ "C\x324"                     "C\u0324": the escape takes    C24: Python's \x takes two digits
//	                                 every hex digit, as C++ does
//
// # Parsing Python
//
// The tree-sitter C library is the one go-tree-sitter compiles, but it is
// called from C of our own (tsflat.go: one cgo call parses a file and
// returns its named nodes as a flat array) rather than through
// go-tree-sitter's Go API, and init points the library's allocator back at
// libc. Both are kept because they are measured: BenchmarkParseSideBySide
// (go test -bench ParseSideBySide ./envaudit) builds the same node lists
// every way, interleaved, and go-tree-sitter as it comes (a cgo call per
// node and field, every malloc and free a callback from C into Go) took
// 2.3-2.6x the time of the flat walk, its Go API with libc's allocator
// 1.8-2.0x, and the flat walk with go-tree-sitter's allocator 1.5x
// (medians of 100-200 passes over the Python fixtures, two runs). The allocator is
// process-wide; resetting it is safe because go-tree-sitter's callbacks
// end in libc's malloc and free too, so memory allocated before the reset
// may be freed after it, and ptojitd uses tree-sitter only here.
package envaudit
