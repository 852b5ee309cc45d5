/* Built plainly (not with oscar cc): its constructor calls back into the program (early.c). */
void hook(const char *who);
__attribute__((constructor)) static void plain_init(void) { hook("plain library's constructor"); }
