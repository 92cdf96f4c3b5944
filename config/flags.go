package config

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// AddFlags defines the flag of every key that has one, with its default
// and help from Keys.
func AddFlags(f *pflag.FlagSet) {
	for _, k := range Keys {
		if k.Flag == "" {
			continue
		}
		switch d := k.Default.(type) {
		case string:
			f.String(k.Flag, d, k.Usage)
		case int:
			f.Int(k.Flag, d, k.Usage)
		case bool:
			f.Bool(k.Flag, d, k.Usage)
		case float64:
			f.Float64(k.Flag, d, k.Usage)
		case time.Duration:
			f.Duration(k.Flag, d, k.Usage)
		case []string:
			f.StringSlice(k.Flag, d, k.Usage)
		default:
			panic(fmt.Sprintf("config: key %s has a flag but a default of type %T", k.Name, k.Default))
		}
	}
}

// BindFlags makes v read each key from its flag in f (defined by
// AddFlags) when the flag is set: flags > env > file > defaults.
func BindFlags(v *viper.Viper, f *pflag.FlagSet) error {
	for _, k := range Keys {
		if k.Flag == "" {
			continue
		}
		if err := v.BindPFlag(k.Name, f.Lookup(k.Flag)); err != nil {
			return fmt.Errorf("unable to bind --%s: %w", k.Flag, err)
		}
	}
	return nil
}
