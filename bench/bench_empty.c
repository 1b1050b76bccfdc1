/*
 * A program that does nothing: its start and end are the least CPU a
 * process costs the machine (gitgate_scan_bench's "process floor"; built
 * static, by the hook's compiler, as gitgate-hook is).
 */
int
main(void)
{
    return 0;
}
