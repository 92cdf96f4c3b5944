package bundles

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// ErrNoRevision is returned when no revision is given and the directory is
// not in a Git work tree.
var ErrNoRevision = errors.New("no revision: the directory is not in a Git work tree; pass --revision")

// GitRevision is the commit HEAD of the Git work tree holding dir, with
// "-dirty" appended when `git status --porcelain` shows changes (tracked or
// untracked) under dir.
func GitRevision(ctx context.Context, dir string) (string, error) {
	head, err := git(ctx, dir, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", fmt.Errorf("unable to find the revision of %q: %w: %w", dir, ErrNoRevision, err)
	}
	status, err := git(ctx, dir, "status", "--porcelain", "--", ".")
	if err != nil {
		return "", fmt.Errorf("unable to find the revision of %q: %w", dir, err)
	}
	if status != "" {
		return head + "-dirty", nil
	}
	return head, nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return "", fmt.Errorf("git %s: %s", args[0], msg)
		}
		return "", fmt.Errorf("git %s: %w", args[0], err)
	}
	return strings.TrimSpace(stdout.String()), nil
}
