#!/usr/bin/perl
# Text processing for the allocator benchmark: word frequencies, regex rewriting and sorting
# of a generated text (bench/workloads.py writes it). usage: perl perl_words.pl FILE PASSES
use strict;
use warnings;
my ($file, $passes) = @ARGV;
$passes ||= 1;
my $sum = 0;
for my $pass (1 .. $passes) {
    my %freq;
    my @lines;
    open(my $fh, '<', $file) or die "$file: $!";
    while (my $line = <$fh>) {
        chomp $line;
        for my $w (split /\s+/, $line) {
            $freq{lc $w}++;
        }
        (my $rewritten = $line) =~ s/(\w+)ing\b/<$1>/g;
        push @lines, join(",", reverse split / /, $rewritten);
    }
    close $fh;
    my @top = (sort { $freq{$b} <=> $freq{$a} || $a cmp $b } keys %freq)[0 .. 9];
    $sum += $freq{$_} for @top;
    $sum += length($_) for sort @lines;
}
print "checksum $sum\n";
