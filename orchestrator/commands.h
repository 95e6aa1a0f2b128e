/* commands.h - one run function per subcommand (cmd_*.c). */
#ifndef KILN_COMMANDS_H
#define KILN_COMMANDS_H

int cmd_doctor(int argc, char **argv);
int cmd_sandbox(int argc, char **argv);

#endif
