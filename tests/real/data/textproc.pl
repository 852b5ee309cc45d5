#!/usr/bin/perl
# Text processing under Oscar (tests/test_real_suites.py): a generated corpus is tokenized
# with regular expressions, counted in hashes, sorted, formatted with sprintf, transformed
# with tr/// and s///e, packed and unpacked, and reported. The output depends only on the
# arguments, so it must be byte-identical under every correct allocator.
#   perl textproc.pl [LINES]
use strict;
use warnings;

my $lines = shift // 20000;

# Deterministic generator (a 32-bit LCG; no srand/rand, whose sequence may differ by build).
my $state = 12345;
sub rnd { my ($n) = @_; $state = ($state * 1103515245 + 12345) % 2147483648; return int($state / 65536) % $n; }

my @syll = qw(ka lo mi ne ru sa to vi an el or ul qu zh ba de);
sub word {
    my $n = 1 + rnd(3);
    return join '', map { $syll[rnd(scalar @syll)] } 1 .. $n;
}

# The corpus: lines of words, numbers, dates and e-mail-like tokens.
my @corpus;
for my $i (1 .. $lines) {
    my @w = map { word() } 1 .. (3 + rnd(9));
    push @w, sprintf('%04d-%02d-%02d', 1990 + rnd(35), 1 + rnd(12), 1 + rnd(28)) if rnd(4) == 0;
    push @w, word() . '@' . word() . '.example' if rnd(7) == 0;
    push @w, rnd(100000) if rnd(3) == 0;
    push @corpus, ucfirst(join(' ', @w)) . (rnd(5) ? '.' : '!');
}

my (%freq, %first, %len, %dates, %domains);
my ($chars, $numbers, $sum) = (0, 0, 0);
for my $i (0 .. $#corpus) {
    my $line = $corpus[$i];
    $chars += length $line;
    while ($line =~ /\b(\d{4})-(\d\d)-(\d\d)\b/g) { $dates{"$1-$2"}++; }
    while ($line =~ /\b[a-z]+\@([a-z]+)\.example\b/g) { $domains{$1}++; }
    for my $tok (split /[\s.!]+/, lc $line) {
        next unless length $tok;
        if ($tok =~ /^\d+$/) { $numbers++; $sum += $tok; next; }
        next unless $tok =~ /^[a-z]+$/;
        $freq{$tok}++;
        $first{$tok} //= $i;
        $len{length $tok}++;
    }
}

print "lines $lines chars $chars numbers $numbers sum $sum\n";
print "distinct words ", scalar(keys %freq), "\n";
my @top = (sort { $freq{$b} <=> $freq{$a} or $a cmp $b } keys %freq)[0 .. 14];
printf "top %-12s %6d first line %d\n", $_, $freq{$_}, $first{$_} for @top;
print "length $_: $len{$_}\n" for sort { $a <=> $b } keys %len;
my @months = sort keys %dates;
print "months ", scalar(@months), " first $months[0] last $months[-1]\n";
my @busy = (sort { $dates{$b} <=> $dates{$a} or $a cmp $b } @months)[0 .. 4];
print "busy month $_ $dates{$_}\n" for @busy;
print "domains ", scalar(keys %domains), " top ",
    join(',', (sort { $domains{$b} <=> $domains{$a} or $a cmp $b } keys %domains)[0 .. 4]), "\n";

# Transformations: rot13 with tr, vowel counts with s///ge, reverse, join and split.
my ($rot, $vowels) = ('', 0);
for my $line (@corpus[0 .. 999]) {
    (my $r = $line) =~ tr/A-Za-z/N-ZA-Mn-za-m/;
    $rot .= $r;
    (my $v = $line) =~ s/([aeiou])/$vowels++; uc $1/ge;
}
print "rot13 length ", length($rot), " vowels $vowels\n";
my %anagram;
push @{ $anagram{join '', sort split //, $_} }, $_ for keys %freq;
my @classes = sort { @{ $anagram{$b} } <=> @{ $anagram{$a} } or $a cmp $b } keys %anagram;
print "anagram classes ", scalar(@classes), " biggest $classes[0] (",
    join(' ', sort @{ $anagram{$classes[0]} }), ")\n";

# Binary round trip through pack/unpack and a checksum.
my $packed = pack '(N n/a*)*', map { ($freq{$_}, $_) } sort keys %freq;
my %back = reverse unpack '(N n/a*)*', $packed;
my $same = grep { $back{$_} == $freq{$_} } keys %freq;
printf "packed %d bytes, %d words round-tripped, checksum %08x\n", length $packed, $same,
    unpack('%32C*', $packed);

# A sorted, formatted report written through an in-memory file handle.
my $report = '';
open my $fh, '>', \$report or die;
for my $w (sort { $a cmp $b } grep { $freq{$_} >= 50 } keys %freq) {
    printf $fh "%-14s|%s\n", $w, '#' x int($freq{$w} / 50);
}
close $fh;
my @rl = split /\n/, $report;
print "report lines ", scalar(@rl), " bytes ", length($report), "\n";
print "$_\n" for @rl[0 .. 4];
print "$_\n" for @rl[-3 .. -1];

# Local variables and closures created and dropped many times.
my @closures = map { my $k = $_; sub { $k * $_[0] } } 1 .. 5000;
my $acc = 0;
$acc = ($acc + $_->(3)) % 1000003 for @closures;
print "closures $acc\n";
