// sd-bus from libsystemd: the agent's D-Bus client (GeoClue, logind, NetworkManager, the
// desktop's notifications, BlueZ). Swift cannot call C variadic functions; sd-bus has a
// non-variadic call for everything the DBus module needs.
#include <systemd/sd-bus.h>
#include <sys/eventfd.h>
