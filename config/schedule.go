package config

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of the certs.* schedule (package certs falls back to them): the
// CA lives a year and serving certificates 30 days, each renewed at two
// thirds of its life.
const (
	DefaultCADuration         = 365 * 24 * time.Hour
	DefaultCARenewBefore      = DefaultCADuration / 3
	DefaultServingDuration    = 30 * 24 * time.Hour
	DefaultServingRenewBefore = DefaultServingDuration / 3
	// DefaultPropagationDelay is how long a new CA is in the caBundle
	// before it signs anything: the API servers' webhook informers pick up
	// a changed configuration within seconds.
	DefaultPropagationDelay = time.Minute
)

// ScheduleError is a lifetime or margin that makes rotation unsafe; Field
// names it as certs.Options does (validation maps it to its key).
type ScheduleError struct {
	Field string
	Msg   string
}

func (e *ScheduleError) Error() string { return e.Field + ": " + e.Msg }

// CheckSchedule says whether the lifetimes leave room for a rotation with
// overlap: each renewal margin shorter than its lifetime, and the CA
// renewed early enough that the old CA outlives the propagation delay plus
// every serving certificate it signed.
func CheckSchedule(caDuration, caRenewBefore, servingDuration, servingRenewBefore, propagation time.Duration) error {
	var errs []error
	if servingDuration < time.Minute {
		errs = append(errs, &ScheduleError{"ServingDuration", fmt.Sprintf("%s is too short (at least 1m)", servingDuration)})
	}
	if servingRenewBefore <= 0 || servingRenewBefore >= servingDuration {
		errs = append(errs, &ScheduleError{"ServingRenewBefore", fmt.Sprintf("%s must be more than 0 and less than the serving lifetime %s", servingRenewBefore, servingDuration)})
	}
	if caRenewBefore <= 0 || caRenewBefore >= caDuration {
		errs = append(errs, &ScheduleError{"CARenewBefore", fmt.Sprintf("%s must be more than 0 and less than the CA lifetime %s", caRenewBefore, caDuration)})
	} else if caRenewBefore <= servingDuration+propagation {
		errs = append(errs, &ScheduleError{"CARenewBefore", fmt.Sprintf("%s must exceed the serving lifetime plus the propagation delay (%s): the old CA must outlive every serving certificate it signed", caRenewBefore, servingDuration+propagation)})
	}
	if propagation < 0 {
		errs = append(errs, &ScheduleError{"PropagationDelay", fmt.Sprintf("%s is negative", propagation)})
	}
	return errors.Join(errs...)
}
