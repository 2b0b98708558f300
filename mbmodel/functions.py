"""Mathematical functions for equations (re-exported from casadi so models import one place).

Example: ``from mbmodel.functions import sin, if_else``.
"""

from casadi import (acos, asin, atan, atan2, cos, cosh, exp, fabs, fmax, fmin, if_else, log,
                    sign, sin, sinh, sqrt, tan, tanh)

__all__ = ["sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "exp",
           "log", "sqrt", "fabs", "fmin", "fmax", "sign", "if_else", "abs_", "min_", "max_"]

abs_ = fabs
min_ = fmin
max_ = fmax
