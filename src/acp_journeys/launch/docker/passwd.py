"""An image's users, read from its /etc/passwd and /etc/group as the container runtime reads them.

Rules of this module: pure functions over the files' bytes (the launcher reads them from a
never-started container); nothing here touches the engine.
"""

from __future__ import annotations


def home_from_passwd(passwd: bytes | None, user: str) -> str:
    """The home of `user` (a name or a uid) in /etc/passwd, else /home/USER."""
    for line in (passwd or b"").decode("utf-8", "replace").splitlines():
        fields = line.split(":")
        if len(fields) >= 6 and user in (fields[0], fields[2]):
            return fields[5]
    return f"/home/{user}"


def resolve_user(spec: str, passwd: bytes | None, group: bytes | None) -> tuple[int, int]:
    """The (uid, gid) a container's `User` ("name", "uid", "name:group", "uid:gid") runs as.

    As the runtime does it: a user found in /etc/passwd takes its primary group from there; a
    numeric user that is not found runs with gid 0; a named group is looked up in /etc/group.
    A name found nowhere raises ValueError (the engine could not run that user either).
    """
    user, _, grp = spec.partition(":")
    uid, gid = 0, 0
    if user not in ("", "root"):
        entry = _find_entry(passwd, user, width=4)
        if entry is not None:
            uid, gid = int(entry[2]), int(entry[3])
        elif user.isdigit():
            uid = int(user)
        else:
            raise ValueError(f"user {user!r} is not in the image's /etc/passwd")
    if grp:
        if grp.isdigit():
            gid = int(grp)
        else:
            entry = _find_entry(group, grp, width=3)
            if entry is None:
                raise ValueError(f"group {grp!r} is not in the image's /etc/group")
            gid = int(entry[2])
    return uid, gid


def _find_entry(table: bytes | None, key: str, width: int) -> list[str] | None:
    """The line of /etc/passwd (width 4) or /etc/group (width 3) whose name or id (its third
    field) is `key`, split on ':'; a line whose id fields are not numbers is skipped."""
    for line in (table or b"").decode("utf-8", "replace").splitlines():
        fields = line.split(":")
        if len(fields) >= width and key in (fields[0], fields[2]) and all(f.isdigit() for f in fields[2:width]):
            return fields
    return None
