"""ember.backends.mps: Apple's Metal backend does not exist in ember."""


def is_available():
    return False


def is_built():
    return False
