package clientcmd

import (
	"errors"
	"fmt"

	"github.com/ptojit/ptojit/api"
	"github.com/ptojit/ptojit/api/client"
	"github.com/ptojit/ptojit/cmd/internal/cli"
)

// ReplyError returns the error of a daemon's reply: nil for a command that
// exited 0, a bare exit code for one that failed on its own output, and
// for a failed request (one with a Kind or an Error) the message
// FailureText composes, with exit code ReplyExit. The Python client
// (python/ptojit/client.py, _reply_error) composes the same message and
// exit code from the same reply.
func ReplyError(r *api.DaemonResponse) error {
	if r.Error == "" && r.Kind == "" {
		return cli.Exit(r.Exit)
	}
	return &cli.ExitError{Code: ReplyExit(r), Err: errors.New("daemon: " + FailureText(r))}
}

// ReplyExit is the exit code of a failed request: the command's, at least
// 1.
func ReplyExit(r *api.DaemonResponse) int { return max(r.Exit, cli.ExitFailure) }

// FailureText composes the message of a failed daemon reply from its kind
// and data, never from the reply's Error: Error stands in only for what
// the data does not say (a cause the store gave, an internal error), and
// a kind this client does not know is worded as internal.
func FailureText(r *api.DaemonResponse) string {
	d := r.Data
	switch r.Kind {
	case api.KindMiss:
		return fmt.Sprintf("no entry %s in the cache", d["key"])
	case api.KindDamaged:
		return fmt.Sprintf("the cache entry %s is damaged (%s); `ptojit cache verify` removes damaged entries, and a build publishes it again", d["key"], d["reason"])
	case api.KindRefused:
		return refusedText(d)
	case api.KindUnavailable:
		return fmt.Sprintf("the identity is unavailable: %s: %s (the build would compile and not be cached)", d["component"], d["reason"])
	case api.KindStoreFailure:
		return storeFailureText(d)
	case api.KindNotAnswering:
		if d["pid"] == "" || d["pid"] == "0" {
			return fmt.Sprintf("the daemon accepted no connection for %s: it is not answering (stopped or hung; its log is %s; %s sets the bound)",
				d["bound"], d["log"], client.NoAnswerVariable)
		}
		return fmt.Sprintf("the daemon (pid %s) sent nothing for %s: it is not answering (stopped or hung; its log is %s; %s sets the bound)",
			d["pid"], d["bound"], d["log"], client.NoAnswerVariable)
	case api.KindBadRequest:
		switch {
		case d["op"] != "":
			return fmt.Sprintf("the daemon does not know the operation %q: it is of another version; stop it with \"ptojit daemon stop\"", d["op"])
		case d["args"] != "":
			return fmt.Sprintf("the daemon does not serve %q", d["args"])
		case d["dir"] != "":
			return fmt.Sprintf("the request's working directory %q is not absolute", d["dir"])
		}
		return "the daemon could not read the request: " + r.Error
	case api.KindProtocol:
		return fmt.Sprintf("the daemon (pid %s) speaks protocol %s, this client %s", d["pid"], d["daemon"], d["client"])
	case api.KindShutdown:
		return "the daemon stopped before it answered: " + r.Error
	}
	return "the daemon failed: " + r.Error + "; its log says more (ptojit daemon status names it)"
}

// refusedText words a refusal: of the connection (the daemon's limit),
// of this client (another user), or of a cache directory or file for its
// owner or mode (data path, dir, owner, mode and user, the uid it must
// be).
func refusedText(d map[string]string) string {
	switch {
	case d["max_connections"] != "":
		return fmt.Sprintf("the daemon refused the connection: it has %s open, its limit; try again", d["max_connections"])
	case d["uid"] != "":
		return fmt.Sprintf("the daemon refused this client (uid %s): it serves only its own user", d["uid"])
	}
	dir, what := d["dir"], "cache directory "+d["path"]
	if dir == "" {
		dir = d["path"]
	} else if dir != d["path"] {
		what = "file " + d["path"] + " of cache directory " + dir
	}
	why := "writable by group or others"
	if d["owner"] != d["user"] {
		why = "owned by another user"
	}
	return fmt.Sprintf("%s is owned by uid %s with mode %s: %s, so anyone who can write it could forge a cache entry; "+
		"ptojit uses only a cache its own user (uid %s) owns and alone can write; make it the user's own (`chown -R %s %s && chmod 700 %s`; "+
		"remove files other users left there), or set PTOJIT_CACHE_DIR to a directory of your own; to share a cache between users, "+
		"share it through a remote tier (PTOJIT_REMOTE), not a shared directory", what, d["owner"], d["mode"], why, d["user"], d["user"], dir, dir)
}

// storeFailureText words a store that cannot be used: held by another
// process (the daemon, or a command running in-process), or failing for
// a cause (its reason).
func storeFailureText(d map[string]string) string {
	switch d["holder"] {
	case "daemon":
		who := "the ptojit daemon"
		if d["pid"] != "" && d["since"] != "" {
			who += fmt.Sprintf(" (pid %s, running since %s)", d["pid"], d["since"])
		} else if d["pid"] != "" {
			who += fmt.Sprintf(" (pid %s)", d["pid"])
		}
		return fmt.Sprintf("the cache %s is in use by another process: %s; stop it with \"ptojit daemon stop\", "+
			"or run without --no-daemon and PTOJIT_DAEMON=0 to use it; or pass --wait to wait for it", d["path"], who)
	case "in_process":
		return fmt.Sprintf("the cache %s is in use by another process: a ptojit command running in-process (PTOJIT_DAEMON=0 or --no-daemon), "+
			"which releases it when it finishes; or pass --wait to wait for it", d["path"])
	}
	return fmt.Sprintf("the cache %s is unusable: %s", d["path"], d["reason"])
}

// WithRemedy returns err with what to do about it, for the errors of
// reaching the daemon whose remedy is this command line's to say: a
// daemon directory or socket refused (*client.UntrustedError).
func WithRemedy(err error) error {
	var u *client.UntrustedError
	if errors.As(err, &u) {
		return fmt.Errorf("%w (remove it, or set XDG_RUNTIME_DIR to a directory of your own)", err)
	}
	return err
}
