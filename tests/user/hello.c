/* printf through musl's stdio and an exit status */
#include "ut.h"
int main(void) { printf("hello from user space\n"); return 3; }
