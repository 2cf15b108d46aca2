'''wpa_supplicant mock template for measuring GeoClue's Wi-Fi scans.

The root object fi.w1.wpa_supplicant1 with one interface (wlan0) whose Scan method
appends a line to the file named by the "scan_log" parameter and answers with ScanDone,
and three access points (BSS objects) in view, so GeoClue's Wi-Fi source sends the
locator a Wi-Fi query, not an IP lookup. Used by tools/geoclue-cost/measure.py
(docs/performance.md).
'''

import dbus

SYSTEM_BUS = True
BUS_NAME = 'fi.w1.wpa_supplicant1'
MAIN_OBJ = '/fi/w1/wpa_supplicant1'
MAIN_IFACE = 'fi.w1.wpa_supplicant1'
INTERFACE_IFACE = 'fi.w1.wpa_supplicant1.Interface'
BSS_IFACE = 'fi.w1.wpa_supplicant1.BSS'
INTERFACE = '/fi/w1/wpa_supplicant1/Interfaces/0'


def load(mock, parameters):
    bsss = []
    for i, (ssid, signal) in enumerate([('cafe', -48), ('office', -61), ('neighbour', -72)]):
        path = '%s/BSSs/%d' % (INTERFACE, i)
        mock.AddObject(path, BSS_IFACE, {
            'SSID': dbus.ByteArray(ssid.encode(), variant_level=1),
            'BSSID': dbus.ByteArray(bytes([0x02, 0x11, 0x22, 0x33, 0x44, i]), variant_level=1),
            'Signal': dbus.Int16(signal, variant_level=1),
            'Frequency': dbus.UInt16(2412 + 5 * i, variant_level=1),
        }, [])
        bsss.append(dbus.ObjectPath(path))
    scan_log = parameters.get('scan_log', '/dev/null')
    mock.AddObject(INTERFACE, INTERFACE_IFACE, {
        'Ifname': dbus.String('wlan0', variant_level=1),
        'State': dbus.String('completed', variant_level=1),
        'BSSs': dbus.Array(bsss, signature='o', variant_level=1),
    }, [
        ('Scan', 'a{sv}', '',
         'import time\n'
         'open(%r, "a").write("%%.3f\\n" %% time.time())\n'
         'self.EmitSignal("%s", "ScanDone", "b", [True])' % (scan_log, INTERFACE_IFACE)),
    ])
    mock.AddProperties(MAIN_IFACE, dbus.Dictionary({
        'Interfaces': dbus.Array([dbus.ObjectPath(INTERFACE)], signature='o'),
    }, signature='sv'))
    mock.AddMethods(MAIN_IFACE, [('GetInterface', 's', 'o', 'ret = dbus.ObjectPath("%s")' % INTERFACE)])
