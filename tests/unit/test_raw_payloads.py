"""Who may read raw payloads: the embedded default's roles, and a manager that answers the
named permission itself (foodtaster_airflow.raw_payloads)."""

from __future__ import annotations

import pytest
from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager
from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

from foodtaster_airflow.raw_payloads import RAW_PAYLOADS, may_read_raw


def _user(role: str | None) -> SimpleAuthManagerUser:
    return SimpleAuthManagerUser(username=f"someone-{role}", role=role)


@pytest.mark.parametrize(("role", "may"), [("admin", True), ("ADMIN", True), ("op", True), ("user", False),
                                           ("viewer", False), (None, False), ("nobody", False)])
def test_the_embedded_default_lets_op_and_admin_read_raw_payloads(role, may):
    manager = SimpleAuthManager()
    # its own answer passes every role that may log in: it cannot tell a viewer from an admin
    assert manager.is_authorized_custom_view(method="GET", resource_name=RAW_PAYLOADS, user=_user("viewer"))
    assert may_read_raw(manager, _user(role)) is may


class NamedPermissions(SimpleAuthManager):
    """An auth manager that answers custom views by the permissions granted to each user, as
    FAB (`can_read` on the resource) and Keycloak (`Custom#GET`, the resource id) do."""

    def __init__(self, granted: dict[str, set[tuple[str, str]]]) -> None:
        super().__init__()
        self.granted = granted
        self.asked: list[tuple[str, str]] = []

    def is_authorized_custom_view(self, *, method, resource_name, user):
        self.asked.append((method, resource_name))
        return (method, resource_name) in self.granted.get(user.get_name(), set())


def test_a_manager_that_answers_custom_views_decides_by_the_named_permission():
    manager = NamedPermissions({"someone-viewer": {("GET", RAW_PAYLOADS)},
                                "someone-admin": {("GET", "Some other view")}})
    # the permission, not the role: a viewer granted it may, an admin without it may not
    assert may_read_raw(manager, _user("viewer")) is True
    assert may_read_raw(manager, _user("admin")) is False
    assert manager.asked == [("GET", "Foodtaster raw payloads")] * 2
