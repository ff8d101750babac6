// tinyformer: one executable; the program is tf::app::run_program (program.cpp, with the subcommands).
#include "commands.hpp"

int main(int argc, char** argv) { return tf::app::run_program(argc, argv); }
