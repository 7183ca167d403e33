"""Notifications' data (issue 35 item 3): what each person chose per kind and who they are in
Slack (``prefs``), the org's brief time and Slack workspace (``org``), the events the flows'
own tables record through migration 0054's triggers (``events``) and what is sent, once
each (``outbox``).

Every function takes a cursor from ``Database.transaction(org_id)`` (RLS scopes it)."""
