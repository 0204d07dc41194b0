#include "gradcheck.h"
using namespace ember;
using namespace ember::testing;
TEST(GradShape, Placeholder) {}
