"""Colony Context Engine: the shared package every Cloud Function deploys with."""
