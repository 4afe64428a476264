// Lock modes: names for messages and dumps.
#include "sm/lock/lock_mode.h"

namespace sm::lock {

const char* LockModeName(LockMode mode) {
  switch (mode) {
    case LockMode::kNone:
      return "NL";
    case LockMode::kIS:
      return "IS";
    case LockMode::kIX:
      return "IX";
    case LockMode::kS:
      return "S";
    case LockMode::kSIX:
      return "SIX";
    case LockMode::kX:
      return "X";
    case LockMode::kInc:
      return "INC";
    case LockMode::kXK:
      return "XK";
  }
  return "?";
}

}  // namespace sm::lock
