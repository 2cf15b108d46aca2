// The daemon: wiring, health coordinator, sd_notify, service lifecycle.
