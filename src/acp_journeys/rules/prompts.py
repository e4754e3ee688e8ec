"""The exact words the journeys send.

Rules of this module: plain functions of the markers and paths; no I/O. The bundled reference
agent and the scripted model endpoint recognise these sentences, so change them only together.

It must not know the agent, the wire or the judge: only the words the journeys send.
"""

from __future__ import annotations

SESSION_FILES_DIR = "/tmp/.rondar-session-files"
NOTE_PATH = f"{SESSION_FILES_DIR}/note.txt"

PLAN_TITLE_SAVED_PLAN = "A Plan turn to a saved plan"
PLAN_TITLE_PLAN_REGULAR_PLAN = "Plan, then regular, then Plan again"


def reply_exactly(marker: str) -> str:
    return f"Reply with exactly {marker} and nothing else."


def remember_word(word: str) -> str:
    return f"Remember this word: {word}. Reply with exactly ACK and nothing else."


def ask_word() -> str:
    return "What is the word that I asked you to remember? Reply with the word and nothing else."


def image_and_file(note_path: str = NOTE_PATH) -> str:
    return (
        f"Read the file {note_path} and look at the attached image. "
        "Reply with the word that the file holds and the colour of the image, and nothing else."
    )


def run_sleep() -> str:
    return "Run the shell command `sleep 120` and wait for it."


def plan_turn(input_path: str, title: str) -> str:
    return (
        f"Run the shell command `cat {input_path}`. "
        f'Then call the tool create_plan of the rondar tool server with the title "{title}" '
        "and a description that holds the output of cat. "
        "Then call the tool get_plan of the rondar tool server with the plan ID that create_plan returned. "
        "Reply with the plan ID and nothing else."
    )


def regular_touch(path: str) -> str:
    return f"Create the file {path} with the shell command `touch {path}`."
