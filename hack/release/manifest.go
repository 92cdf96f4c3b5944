package main

import (
	"fmt"

	"sigs.k8s.io/yaml"
)

// PluginName is the plugin's name in krew (kubectl krew install mandate),
// and its manifest's file name.
const PluginName = "mandate"

// The krew plugin manifest (krew.googlecontainertools.github.com/v1alpha2
// Plugin), only the fields Mandate writes: krew's own Go module is not a
// dependency of Mandate's (its client-go requirement would replace
// Mandate's), so test/krew validates what is written here with krew's own
// validate-krew-manifest and installs it with krew.
type plugin struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   metadata   `json:"metadata"`
	Spec       pluginSpec `json:"spec"`
}

type metadata struct {
	Name string `json:"name"`
}

type pluginSpec struct {
	Version          string     `json:"version"`
	Homepage         string     `json:"homepage"`
	ShortDescription string     `json:"shortDescription"`
	Description      string     `json:"description"`
	Platforms        []platform `json:"platforms"`
}

type platform struct {
	Selector selector        `json:"selector"`
	URI      string          `json:"uri"`
	SHA256   string          `json:"sha256"`
	Files    []fileOperation `json:"files"`
	Bin      string          `json:"bin"`
}

type selector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

type fileOperation struct {
	From string `json:"from"`
	To   string `json:"to"`
}

const (
	homepage         = "https://github.com/mandate-dev/mandate"
	shortDescription = "Why a GPU workload waits, and which authority rule holds it"
	description      = `Mandate is an admission-policy engine for GPU Kubernetes clusters: its
authority model (tenants, priorities, quota, topology, preemption) decides
every workload at the door. This plugin runs Mandate's own commands against
the cluster of your kubeconfig:

  kubectl mandate explain job/NAME -n NS   why a workload runs or waits now,
                                           and the change that would let it run
  kubectl mandate report                   idle GPUs beside blocked work, and
                                           the rule that blocks it
  kubectl mandate simulate fgd ...         the placement simulator

It only reads the cluster.
`
)

// Manifest is the krew manifest of version, each archive downloaded from
// urlBase/NAME and checked against its sha256.
func Manifest(version, urlBase string, archives []Archive) ([]byte, error) {
	p := plugin{
		APIVersion: "krew.googlecontainertools.github.com/v1alpha2",
		Kind:       "Plugin",
		Metadata:   metadata{Name: PluginName},
		Spec: pluginSpec{Version: version, Homepage: homepage, ShortDescription: shortDescription,
			Description: description},
	}
	for _, a := range archives {
		p.Spec.Platforms = append(p.Spec.Platforms, platform{
			Selector: selector{MatchLabels: map[string]string{"os": a.OS, "arch": a.Arch}},
			URI:      urlBase + "/" + a.Name,
			SHA256:   a.SHA256,
			Files:    []fileOperation{{From: a.Binary, To: "."}},
			Bin:      a.Binary,
		})
	}
	b, err := yaml.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("unable to write the krew manifest: %w", err)
	}
	return b, nil
}
