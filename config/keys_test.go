package config_test

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mandate-dev/mandate/config"
	"github.com/mandate-dev/mandate/schedsync"
)

// TestKeysMatchServe: every leaf field of Serve has exactly one entry in
// Keys, of the field's own type, and every entry is a field: a key is
// declared in one table row beside its field, and nothing else.
func TestKeysMatchServe(t *testing.T) {
	fields := map[string]reflect.Type{}
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			name := prefix + f.Tag.Get("mapstructure")
			if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Duration]() {
				walk(name+".", f.Type)
				continue
			}
			fields[name] = f.Type
		}
	}
	walk("", reflect.TypeFor[config.Serve]())

	var names, flags []string
	for _, k := range config.Keys {
		typ, ok := fields[k.Name]
		if assert.True(t, ok, "key %s is no field of Serve", k.Name) {
			assert.Equal(t, typ, reflect.TypeOf(k.Default), "the default of %s", k.Name)
		}
		assert.NotContains(t, names, k.Name, "key %s listed twice", k.Name)
		names = append(names, k.Name)
		if k.Flag != "" {
			assert.NotContains(t, flags, k.Flag, "flag --%s used twice", k.Flag)
			assert.NotEmpty(t, k.Usage, "flag --%s has no help", k.Flag)
			flags = append(flags, k.Flag)
		}
	}
	for name := range fields {
		assert.True(t, slices.Contains(names, name), "field %s has no entry in Keys", name)
	}
	require.NotPanics(t, func() { config.Default() })
}

// TestVolcanoConfigDefaults: the defaults of sync.volcanoConfig* are
// schedsync's (which config cannot import: schedsync's tests reach config
// through the test API server's certificates).
func TestVolcanoConfigDefaults(t *testing.T) {
	d := config.Default()
	assert.Equal(t, schedsync.DefaultVolcanoConfigNamespace, d.Sync.VolcanoConfigNamespace)
	assert.Equal(t, schedsync.DefaultVolcanoConfigName, d.Sync.VolcanoConfigName)
}
