"""Colony Context Engine: the shared package every Cloud Function deploys with."""

from colony import startup

# A deployed function's start-up begins with its first import of this package: see
# colony.startup (it does nothing outside Cloud Run).
startup.begin()
