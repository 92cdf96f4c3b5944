package config

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
)

// Bind registers every key's default and environment variables on v. The
// caller binds its flags (v.BindPFlag) and reads a file (ReadFile); viper
// then resolves each key as flag > env > file > default.
func Bind(v *viper.Viper) error {
	v.SetEnvPrefix("MANDATE")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	for _, k := range Keys {
		v.SetDefault(k.Name, k.Default)
		if err := v.BindEnv(append([]string{k.Name}, k.Env...)...); err != nil {
			return fmt.Errorf("unable to bind the environment of %s: %w", k.Name, err)
		}
	}
	return nil
}

// ReadFile merges the YAML configuration file at path into v.
func ReadFile(v *viper.Viper, path string) error {
	v.SetConfigFile(path)
	v.SetConfigType("yaml")
	if err := v.ReadInConfig(); err != nil {
		return fmt.Errorf("unable to read the configuration file %q: %w", path, err)
	}
	return nil
}

// Load decodes v, already Bind-ed, into a Serve and validates it. Unknown
// keys and values of the wrong type are errors naming the key.
func Load(v *viper.Viper) (Serve, error) {
	if err := unknownKeys(v); err != nil {
		return Serve{}, err
	}
	var s Serve
	if err := v.UnmarshalExact(&s, strict); err != nil {
		return Serve{}, typeErrors(v, err)
	}
	if err := s.Validate(); err != nil {
		return Serve{}, err
	}
	return s, nil
}

// strict decodes without weak typing: strings from the environment are
// parsed into numbers, durations and lists, but a YAML list is not a
// string and a map is not a number.
func strict(c *mapstructure.DecoderConfig) {
	c.WeaklyTypedInput = false
	c.DecodeHook = mapstructure.ComposeDecodeHookFunc(
		mapstructure.StringToTimeDurationHookFunc(),
		mapstructure.StringToIntHookFunc(),
		mapstructure.StringToSliceHookFunc(","),
		mapstructure.StringToBoolHookFunc(),
		mapstructure.StringToFloat64HookFunc(),
	)
}

// unknownKeys reports every key viper holds that Keys does not list.
func unknownKeys(v *viper.Viper) error {
	var errs []error
	seen := map[string]bool{}
	for _, key := range v.AllKeys() {
		if _, ok := lookup(key); ok {
			continue
		}
		// A scalar where a section is expected, e.g. "webhook: 1".
		if sub := children(key); len(sub) > 0 {
			errs = append(errs, fieldErr(sub[0][:len(key)], "is a section, not a value (keys: %s)", strings.Join(sub, ", ")))
			continue
		}
		if !seen[key] {
			seen[key] = true
			errs = append(errs, fieldErr(key, "unknown key (known keys: %s)", strings.Join(names(), ", ")))
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

// typeErrors rewrites mapstructure's decoding errors as FieldErrors naming
// the key, the value and the type expected.
func typeErrors(v *viper.Viper, err error) error {
	var errs []error
	var walk func(error)
	walk = func(err error) {
		if de, ok := err.(*mapstructure.DecodeError); ok {
			name, _, _ := strings.Cut(de.Name(), "[")
			if k, ok := lookup(name); ok {
				errs = append(errs, fieldErr(k.Name, "%s is not %s (want %s)", show(v.Get(k.Name)), k.Kind, k.Type))
				return
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			if e := u.Unwrap(); e != nil {
				walk(e)
			}
		}
	}
	walk(err)
	if len(errs) == 0 {
		return fmt.Errorf("unable to decode the configuration: %w", err)
	}
	return errors.Join(errs...)
}

// show prints a value as the user wrote it: strings quoted.
func show(val any) string {
	if s, ok := val.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	if val == nil {
		return "null"
	}
	if reflect.TypeOf(val).Kind() == reflect.Map {
		return fmt.Sprintf("a mapping %v", val)
	}
	return fmt.Sprintf("%v", val)
}
