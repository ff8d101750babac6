// placeholder entry point, replaced by the app layer
#include <fmt/format.h>
int main() { fmt::print("tinyformer\n"); return 0; }
