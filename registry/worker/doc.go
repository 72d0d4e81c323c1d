// Package worker runs compiled callables in local child worker processes:
// an L3 Worker owns N chip children (LOCAL_CHIP) and optional Python SUB
// children (LOCAL_PYTHON), registers callables on them by hashid before
// dispatch, and runs an orchestration function in the parent that submits
// tasks to them. An L4 Worker has next-level Worker children instead of chip
// children (Config.WorkerChildren): Python dispatch loops that, like SUB
// children, are LOCAL_PYTHON targets, and that SubmitNextLevel reaches with
// a Python handle. A ChipWorker is the L2 path: one chip child that runs a
// registered handle directly (Call), with no orchestrator.
//
// # Processes
//
// A chip child is the ptojit engine (or a test binary) re-executed in its
// hidden child mode, which calls child.Main (package
// registry/worker/child). A SUB child is python3 running the loop in
// subchild.py, which this package embeds. Every child inherits two
// descriptors:
//
//	3  its end of a SOCK_SEQPACKET socketpair: the mailbox
//	4  the tensor arena, a memfd that the parent and every child map
//	   MAP_SHARED, so tensors travel as (offset, length) into it
//
// The mailbox carries one operation at a time: the parent side of each
// endpoint holds a per-endpoint lock from sending a request until its reply
// is read, and there are no sequence numbers. A timeout, a dead child or a
// malformed reply therefore retires the endpoint (and kills the child). A
// reply that is longer or shorter than its frame, is not a frame, names
// another hashid or passes descriptors is malformed: the descriptors the
// kernel installed in the parent are closed first.
//
// # Replacement
//
// A retired child is replaced before the next request addressed to it (a
// call, a task of Run, Negotiate, Activate, Deactivate, Alive): the old
// process is killed and waited for and its mailbox closed, then a new
// process of the same configuration is started and initialized, every live
// registration of its namespace is installed on it from the payloads the
// parent holds (Registrar Detach, then Attach, with registrations held
// off), the operations and activations its predecessor held are offered
// and activated again (so module init runs in the new process), and it
// reports ready. Its uncertain pairs stay blocked (seed 000: a marked
// digest is blocked until the Worker restarts, and a replacement is no
// restart): a live registration whose hashid is uncertain on the child is
// not installed on the replacement, its tasks for that hashid are refused
// with REGISTER_CLEANUP_UNCERTAIN, and so is registering it again. Requests that were in flight on the retired endpoint
// are not retried, since their outcome there is unknown (a task may have
// written part of its outputs): they fail with the EndpointError naming
// the violation, and the caller decides. Registrations made while a child
// is retired skip it and reach it when it is replaced.
//
// Config.MaxRestarts bounds the replacements of one child within
// Config.RestartWindow (5 a minute by default); a replacement that fails
// to start counts. Beyond the bound the child is given up for the Worker's
// lifetime: requests to it fail with ErrChildGivenUp, which names the last
// failure; Run's tasks for any child of a path go to its siblings.
// Worker.Children reports each child's pid, replacement count, last failure
// and whether it was given up.
//
// # Registration
//
// Worker.Register computes the canonical descriptor and hashid and hands
// them to a Registrar, which sends REGISTER_CALLABLE to every
// active child of the namespace (whole scope) and publishes a handle only
// when all installed it; on any failure the Registrar cleans up in reverse
// and marks unconfirmed target/hashid pairs uncertain for the Worker's
// lifetime (REGISTER_PARTIAL_FAILURE, REGISTER_CLEANUP_UNCERTAIN).
// Registrations made before Start are installed on each child (Registrar
// Attach) before the child is asked for READY.
//
// The register payload travels staged in a sealed memfd (package
// mailbox); the chip child (package registry/worker/child) re-parses it,
// recomputes the descriptor with its own platform and runtime, installs
// only if the digest equals the frame's, and prewarms the callable before
// it replies.
//
// Private slots never leave the child: replies carry a status and the
// digest, tasks carry the digest, and the child resolves digest -> slot
// immediately before executing. Final unregister follows the seed's six
// steps through registry.TargetTable: decrement; keep if still referenced;
// else stop resolution, clear the executable state (dlclose), free the slot
// and forget the hashid.
//
// # Packages
//
// This package is the parent side. The mailbox frames, their args, the
// arena and the staged payloads are the wire of package
// registry/worker/mailbox, whose documentation is their byte layout
// (mailbox layout version 1); this package re-exports the wire types its
// callers use (TaskArgs, Tensor, Arena, Buffer, ...). The chip child is
// package registry/worker/child, which this package does not import: a
// program that starts chip children calls child.Main in its hidden child
// mode, and names itself in Config.ChildCommand.
package worker
