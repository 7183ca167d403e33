"""Notifications where people are (issue 35 item 3): what each person chose to be told, by
email or in Slack, and its delivery, once each; the brief at the org's local time; Slack's
Approve and Reject buttons, which decide through the same person-authorised path as
/overview.

Offers: ``settings`` (a person's choices and Slack identity; the org's Slack and brief time),
``run`` (one org's turn of the ``notify`` schedule: the brief, the fan-out, the sends),
``slack_actions`` (a Slack button click, verified and mapped to a person). What is told is
recorded by the flows' own tables (migration 0054's triggers), so no other capability calls
this one; ``docs/notifications.md`` follows one event through.
"""
