"""ksync host tool: build, boot under QEMU, parse KTAP/KSYNC output, report results.

Modules: ktap (parsing), envdetect (host facts), qemu (boot + verdict), hosted (run hosted
programs), report (tables), cli (command line).
"""
__version__ = "0.1.0"
