"""Who may read a quarantined message's raw bytes: a permission of Airflow's auth manager.

The batches page (plugins/foodtaster_batches.py) asks, at each request, whether the logged-in
user may `GET` the custom view named `RAW_PAYLOADS`; those who may see the exact bytes, the
others the masked view (docs/decisions/024-raw-payloads-a-permission-of-the-auth-manager.md).

- A real auth manager decides by that name: FAB by the permission `can_read` on the
  resource `Foodtaster raw payloads` given to a role, Keycloak by the scope `GET` on the
  `Custom` resource with `resource_id` `Foodtaster raw payloads`; any other manager that
  answers `is_authorized_custom_view` itself, likewise.
- The embedded default, Airflow's SimpleAuthManager, answers every custom view for every
  role that may log in, a viewer too: its answer tells no one apart. For it the role decides:
  OP and ADMIN may read raw payloads, USER and VIEWER may not. A subclass of it (what
  `[core] auth_manager` would name) cannot carry the rule: `airflow standalone`, the local
  env's Airflow, replaces any other auth manager by the SimpleAuthManager.
"""

from __future__ import annotations

from typing import Any

from airflow.api_fastapi.auth.managers.base_auth_manager import BaseAuthManager
from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import (
    SimpleAuthManager,
    SimpleAuthManagerRole,
)
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

RAW_PAYLOADS = "Foodtaster raw payloads"  # the custom view a real auth manager grants
RAW_READERS = frozenset({SimpleAuthManagerRole.OP, SimpleAuthManagerRole.ADMIN})  # embedded default


def may_read_raw(manager: BaseAuthManager, user: Any) -> bool:
    """Whether `user` may read raw payloads, as `manager` (the api-server's auth manager) says."""
    if _answers_every_role(manager):
        return _role(user) in RAW_READERS
    return bool(manager.is_authorized_custom_view(method="GET", resource_name=RAW_PAYLOADS, user=user))


def _answers_every_role(manager: BaseAuthManager) -> bool:
    """The embedded default's custom views, which pass every role, not overridden."""
    return (isinstance(manager, SimpleAuthManager)
            and type(manager).is_authorized_custom_view is SimpleAuthManager.is_authorized_custom_view)


def _role(user: Any) -> SimpleAuthManagerRole | None:
    """The embedded default's role of `user` (as its token carries it), None if it names none."""
    name = (user.role or "").upper() if isinstance(user, SimpleAuthManagerUser) else ""
    return next((role for role in SimpleAuthManagerRole if role.name == name), None)
