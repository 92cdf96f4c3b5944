package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mandate-dev/mandate/bundles"
	"github.com/mandate-dev/mandate/modelcheck"
)

// Exit codes of `mandate bundle`: 1 when verification, the model check or
// the Rego tests fail, 2 on bad input (flags, unreadable files, keys).
const (
	exitBundleFailed = 1
	exitBundleBadArg = 2
)

func newBundleCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bundle",
		Short: "Build, sign, verify and inspect OPA bundles of the authority model",
		Long: `OPA bundles of the authority model: a tar.gz with a .manifest (revision,
roots, rego_version, metadata) and, once signed, OPA's .signatures.json.
Flags are named as OPA's own CLI names them, and every bundle is one that
opa run, opa inspect and opa build --verification-key read as well.`,
	}
	cmd.AddCommand(newBundleBuildCommand(), newBundleSignCommand(), newBundleVerifyCommand(), newBundleInspectCommand(),
		newBundleStatusCommand())
	return cmd
}

// bundleExit maps a bundles error to the exit status of `mandate bundle`.
func bundleExit(err error) error {
	if err == nil {
		return nil
	}
	code := exitBundleBadArg
	if errors.Is(err, bundles.ErrTestsFailed) || errors.Is(err, modelcheck.ErrInvalidModel) || errors.Is(err, bundles.ErrUnsigned) ||
		errors.Is(err, bundles.ErrVerification) || errors.Is(err, bundles.ErrInvalidBundle) {
		code = exitBundleFailed
	}
	return &exitError{code: code, err: err}
}

func newBundleBuildCommand() *cobra.Command {
	var (
		output string
		opts   bundles.BuildOptions
	)
	cmd := &cobra.Command{
		Use:   "build DIR -o FILE [--revision REV] [--test]",
		Short: "Build an OPA bundle from a policy directory",
		Long: `Build an OPA bundle from DIR (e.g. policies/): its .rego files less the
*_test.rego suites, and its data.json / data.yaml files, under the root
"mandate". The revision defaults to the Git commit of DIR, with "-dirty" when
git status shows changes under DIR. With --test, DIR's authority model is
checked (as mandate model check does) and DIR's Rego tests run (Mandate's
builtins registered) first, and the build is refused when the model has a
problem or any test fails.

Exit status: 0 on success, 1 when the model check or tests fail, 2 on bad input.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := bundles.Build(cmd.Context(), args[0], opts)
			if err != nil {
				return bundleExit(err)
			}
			if err := bundles.WriteFile(output, b); err != nil {
				return bundleExit(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "built %s: revision %s, %d modules\n", output, b.Manifest.Revision, len(b.Modules))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&output, "output", "o", "bundle.tar.gz", "set the output filename")
	f.StringVarP(&opts.Revision, "revision", "r", "", "set output bundle revision (default: the Git commit of DIR, -dirty when changed)")
	f.BoolVar(&opts.Test, "test", false, "check DIR's model and run its Rego tests first; refuse to build when either fails")
	return cmd
}

func newBundleSignCommand() *cobra.Command {
	var (
		output string
		opts   bundles.SignOptions
	)
	cmd := &cobra.Command{
		Use:   "sign FILE --signing-key KEY -o OUT [--signing-alg RS256] [--key-id ID] [--scope S]",
		Short: "Sign a bundle with OPA's .signatures.json",
		Long: `Sign the bundle FILE and write it to OUT with a .signatures.json: one JWT,
made by OPA's signer, over the SHA-256 digest of every file in the bundle.
Any signature FILE already had is replaced.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output == "" {
				return &exitError{code: exitBundleBadArg, err: errors.New("--output is required")}
			}
			if err := bundles.SignFile(args[0], output, opts); err != nil {
				return bundleExit(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "signed %s → %s (%s, key id %q)\n", args[0], output, algOrDefault(opts.Algorithm), keyIDOrDefault(opts.KeyID))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&output, "output", "o", "", "set the output filename of the signed bundle")
	f.StringVar(&opts.Key, "signing-key", "", "set the secret (HMAC) or path of the PEM file containing the private key (RSA and ECDSA)")
	f.StringVar(&opts.Algorithm, "signing-alg", bundles.DefaultAlgorithm, "name of the signing algorithm")
	f.StringVar(&opts.KeyID, "key-id", bundles.DefaultKeyID, "key id (kid) of the signature, the --verification-key-id verifiers use")
	f.StringVar(&opts.Scope, "scope", "", "scope claim of the signature")
	f.StringVar(&opts.ClaimsFile, "claims-file", "", "set path of JSON file containing optional claims")
	_ = cmd.MarkFlagRequired("signing-key")
	return cmd
}

func newBundleVerifyCommand() *cobra.Command {
	var opts bundles.VerifyOptions
	cmd := &cobra.Command{
		Use:   "verify FILE --verification-key PUB [--verification-key-id ID] [--scope S]",
		Short: "Verify a bundle's signature",
		Long: `Verify the .signatures.json of the bundle FILE with a public key (or HMAC
secret): the JWT's signature, its key id and scope, and the digest of every
file in the bundle.

Exit status: 0 when it verifies, 1 when the bundle is unsigned, corrupted or
does not verify, 2 on bad input (unreadable file or key).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := bundles.Verify(args[0], opts); err != nil {
				return bundleExit(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "verified %s (key id %q)\n", args[0], keyIDOrDefault(opts.KeyID))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.PublicKey, "verification-key", "", "set the secret (HMAC) or path of the PEM file containing the public key (RSA and ECDSA)")
	f.StringVar(&opts.KeyID, "verification-key-id", bundles.DefaultKeyID, "name assigned to the verification key used for bundle verification")
	f.StringVar(&opts.Algorithm, "signing-alg", "", "name of the signing algorithm (default: from the key: RS256 for RSA, ES256/384/512 for ECDSA)")
	f.StringVar(&opts.Scope, "scope", "", "scope to use for bundle signature verification")
	_ = cmd.MarkFlagRequired("verification-key")
	return cmd
}

func newBundleInspectCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "inspect FILE [-o table|json|yaml]",
		Short: "Show a bundle's revision, roots, files and signer",
		Long: `Show what the bundle FILE's manifest says (revision, roots, rego_version,
metadata), its files with their sizes, and who signed it (key id, algorithm,
scope). The signature is shown, not verified: use mandate bundle verify.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := bundles.Inspect(args[0])
			if err != nil {
				return bundleExit(err)
			}
			if output == outputTable {
				return writeBundleInfo(cmd.OutOrStdout(), info)
			}
			return writeStructured(cmd.OutOrStdout(), output, info)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

func writeBundleInfo(out io.Writer, info bundles.Info) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Revision:\t%s\n", info.Revision)
	fmt.Fprintf(tw, "Roots:\t%s\n", strings.Join(info.Roots, ", "))
	if info.RegoVersion != nil {
		fmt.Fprintf(tw, "Rego version:\t%d\n", *info.RegoVersion)
	}
	if len(info.Metadata) > 0 {
		md, err := json.Marshal(info.Metadata)
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "Metadata:\t%s\n", md)
	}
	if s := info.Signature; s != nil {
		fmt.Fprintf(tw, "Signed:\tkey id %q, %s", s.KeyID, s.Algorithm)
		if s.Scope != "" {
			fmt.Fprintf(tw, ", scope %q", s.Scope)
		}
		fmt.Fprintf(tw, ", %d files (not verified)\n", s.Files)
	} else {
		fmt.Fprintf(tw, "Signed:\tno\n")
	}
	fmt.Fprintf(tw, "\nFILE\tSIZE\n")
	for _, f := range info.Files {
		fmt.Fprintf(tw, "%s\t%d\n", f.Name, f.Size)
	}
	return tw.Flush()
}

func algOrDefault(alg string) string {
	if alg == "" {
		return bundles.DefaultAlgorithm
	}
	return alg
}

func keyIDOrDefault(id string) string {
	if id == "" {
		return bundles.DefaultKeyID
	}
	return id
}
