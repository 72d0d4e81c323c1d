package mailbox

// Flags of an ACTIVATE reply's detail.
const (
	ActivateHasImplID   = 1 // the orchestration exports ptojit_op_impl_id
	ActivateInitRan     = 2 // this ACTIVATE ran ptojit_module_init
	ActivateHasShutdown = 4 // the orchestration exports ptojit_module_shutdown
)

// DeactivateShutdownRan is the detail of a DEACTIVATE reply that ran
// ptojit_module_shutdown.
const DeactivateShutdownRan = 1
