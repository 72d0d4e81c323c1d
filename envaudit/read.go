package envaudit

// Read is one environment read found in a source file. A plain value.
type Read struct {
	// Line is the 1-based line of the read.
	Line int
	// Variable is the variable's name; "" for a dynamic read (an
	// unresolvable name or a bulk read of the whole environment).
	Variable string
	// Function holds the read; see the package doc for each language.
	Function string
	// walk ranks the read in the order Python's ast.walk visits the
	// syntax tree (breadth first), which is the order of PyPTO's lint;
	// 0 for C++ and Go reads, whose order is the source's.
	walk int64
}

// Dynamic reports whether the read's variable is unknown.
func (r Read) Dynamic() bool { return r.Variable == "" }

// Function names of reads outside any function.
const (
	ModuleFunction  = "<module>"  // Python top level and class bodies
	PackageFunction = "<package>" // Go package-level initializers
	CppFunction     = "<cpp>"     // every C++ read
)
