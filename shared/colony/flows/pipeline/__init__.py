"""Pipeline: deals (ENT-003) and what closing one starts.

Owns deal updates through the approval queue (``deals``: propose, and the ``deal_update``
applier, which publishes ``deal.closed_won``) and AGT-009's deployment kit for a closed deal
(``onboarding``, and the ``deployment_kit`` applier). The shape of a deal update is a
contract (``colony.contracts.deals``), so approvals can check a person's edit without this
package.
"""
